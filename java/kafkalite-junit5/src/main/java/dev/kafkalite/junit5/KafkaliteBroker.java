package dev.kafkalite.junit5;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** One running kafkalite broker (a process, or kafkalite's image in a container when no command is
 * found and testcontainers is on the classpath): its addresses and its controls. */
public final class KafkaliteBroker implements AutoCloseable {
  /** How to run the broker: a command line split at spaces, or the path of a kafkalite.pyz. */
  public static final String COMMAND_PROPERTY = "kafkalite.cmd";
  public static final String COMMAND_ENV = "KAFKALITE_CMD";
  public static final String BUNDLE_NAME = "kafkalite.pyz";

  /** The class testcontainers' presence is told by. */
  static final String TESTCONTAINERS_CLASS = "org.testcontainers.containers.GenericContainer";

  private final Process process;
  private final Path log;
  private final AutoCloseable container;
  private final String bootstrap;
  private final Map<String, String> listeners;
  private final Map<Integer, String> nodes;
  private final String controlsUrl;
  private final String registryUrl;
  private final KafkaliteControls controls;

  private KafkaliteBroker(Process process, Path log, Map<String, String> ready) {
    this.process = process;
    this.log = log;
    this.container = null;
    this.bootstrap = ready.get("bootstrap");
    this.listeners = new LinkedHashMap<>();
    for (String item : ready.getOrDefault("listeners", "").split(",")) {
      int sep = item.indexOf("://");
      if (sep > 0) listeners.put(item.substring(0, sep), item.substring(sep + 3));
    }
    this.nodes = new LinkedHashMap<>();
    for (String item : ready.getOrDefault("nodes", "").split(",")) {
      int sep = item.indexOf('@');
      if (sep > 0) nodes.put(Integer.parseInt(item.substring(0, sep)), item.substring(sep + 1));
    }
    this.controlsUrl = ready.get("controls");
    this.registryUrl = ready.get("schema_registry");
    this.controls = new KafkaliteControls(controlsUrl);
  }

  /** A broker in a container (KafkaliteContainer.startBroker), stopped by closing the container. */
  KafkaliteBroker(AutoCloseable container, String bootstrap, KafkaliteControls controls) {
    this.process = null;
    this.log = null;
    this.container = container;
    this.bootstrap = bootstrap;
    this.listeners = new LinkedHashMap<>(Map.of("EXTERNAL", bootstrap));
    this.nodes = new LinkedHashMap<>();
    this.controlsUrl = controls.url();
    this.registryUrl = null;
    this.controls = controls;
  }

  /** The first listener's advertised address, HOST:PORT, for bootstrap.servers. */
  public String bootstrap() { return bootstrap; }

  /** Each listener's address by name (PLAINTEXT, SSL, ...). */
  public Map<String, String> listeners() { return Collections.unmodifiableMap(listeners); }

  /** Each node id's address on the first listener (several nodes only). */
  public Map<Integer, String> nodes() { return Collections.unmodifiableMap(nodes); }

  public String controlsUrl() { return controlsUrl; }

  /** The schema registry's URL, or null when it is not on (args "--schema-registry", "0"). */
  public String registryUrl() { return registryUrl; }

  /** The broker's test controls: a method per control, generated from its control table. */
  public KafkaliteControls controls() { return controls; }

  /** Back to empty; connected clients stay connected. */
  public void reset() { controls.reset(); }

  public void snapshot(String name) { controls.snapshot(name); }

  public void restore(String name) { controls.restore(name); }

  public void advanceClock(Duration by) { controls.advanceClock(by.toMillis()); }

  /** How the broker is run: the kafkalite.cmd property or KAFKALITE_CMD; else a kafkalite.pyz in
   * the working directory or a parent; else kafkalite on PATH. */
  public static List<String> command() {
    return findCommand().orElseThrow(() -> new IllegalStateException(NOT_FOUND));
  }

  private static final String NOT_FOUND = "no kafkalite: set -D" + COMMAND_PROPERTY + " or " + COMMAND_ENV
      + ", put a " + BUNDLE_NAME + " (kafkalite bundle " + BUNDLE_NAME + ") beside the tests, install kafkalite on PATH,"
      + " or put org.testcontainers:testcontainers on the test classpath to run kafkalite's image ("
      + "-D" + KafkaliteContainer.IMAGE_PROPERTY + " or " + KafkaliteContainer.IMAGE_ENV + ", else "
      + KafkaliteContainer.DEFAULT_IMAGE + ")";

  /** {@link #command()}, or empty when none of its places has one. */
  static Optional<List<String>> findCommand() {
    String line = System.getProperty(COMMAND_PROPERTY, "");
    if (line.isBlank()) line = System.getenv().getOrDefault(COMMAND_ENV, "");
    if (!line.isBlank()) {
      List<String> fields = Arrays.asList(line.trim().split("\\s+"));
      return Optional.of(fields.size() == 1 && fields.get(0).endsWith(".pyz") ? bundle(Path.of(fields.get(0))) : fields);
    }
    for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
      if (Files.isRegularFile(dir.resolve(BUNDLE_NAME))) return Optional.of(bundle(dir.resolve(BUNDLE_NAME)));
    }
    for (String dir : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
      Path candidate = Path.of(dir, "kafkalite");
      if (Files.isExecutable(candidate)) return Optional.of(List.of(candidate.toString()));
    }
    return Optional.empty();
  }

  /** Whether testcontainers is on the classpath (its classes are loaded only then). */
  static boolean testcontainersPresent() {
    try {
      Class.forName(TESTCONTAINERS_CLASS, false, KafkaliteBroker.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  private static List<String> bundle(Path file) {
    return List.of("python3", "-I", "-S", file.toString());
  }

  /** Starts a broker with the controls on and returns once it printed its ready line; with no
   * command found and testcontainers on the classpath, kafkalite's image in a container instead. */
  public static KafkaliteBroker start(List<String> options, Duration timeout) throws IOException {
    Optional<List<String>> found = findCommand();
    if (found.isEmpty()) {
      if (testcontainersPresent()) return KafkaliteContainer.startBroker(options, timeout);
      throw new IllegalStateException(NOT_FOUND);
    }
    List<String> command = new ArrayList<>(found.get());
    command.addAll(List.of("--host", "127.0.0.1", "--port", "0", "--controls", "0"));
    command.addAll(options);
    Path log = Files.createTempFile("kafkalite-", ".log");
    Process process = new ProcessBuilder(command).redirectError(log.toFile()).start();
    CompletableFuture<String> first = CompletableFuture.supplyAsync(() -> firstLine(process.getInputStream()));
    String line;
    try {
      line = first.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      line = null;
    } catch (Exception e) {
      throw new IOException(e);
    }
    if (line == null || !line.startsWith("kafkalite ready ")) {
      process.destroyForcibly();
      throw new IOException("kafkalite (" + String.join(" ", command) + ") did not start: first line " + line
          + "\nbroker log (" + log + "):\n" + tail(log));
    }
    Map<String, String> ready = new LinkedHashMap<>();
    for (String token : line.trim().split("\\s+")) {
      int eq = token.indexOf('=');
      if (eq > 0) ready.put(token.substring(0, eq), token.substring(eq + 1));
    }
    return new KafkaliteBroker(process, log, ready);
  }

  /** The ready line; the rest of stdout is read and dropped so that the broker never blocks on it. */
  private static String firstLine(InputStream out) {
    BufferedReader reader = new BufferedReader(new InputStreamReader(out, StandardCharsets.UTF_8));
    try {
      String line = reader.readLine();
      Thread drain = new Thread(() -> {
        try {
          while (reader.readLine() != null) { /* dropped */ }
        } catch (IOException e) {
          // the broker ended
        }
      }, "kafkalite-stdout");
      drain.setDaemon(true);
      drain.start();
      return line;
    } catch (IOException e) {
      return null;
    }
  }

  private static String tail(Path log) {
    try {
      String text = Files.readString(log);
      return text.length() > 4000 ? text.substring(text.length() - 4000) : text;
    } catch (IOException e) {
      return "(unreadable: " + e + ")";
    }
  }

  /** SIGTERM, then a kill after 10 s; removes the log. A container is stopped and removed. */
  @Override
  public void close() {
    if (container != null) {
      try {
        container.close();
      } catch (Exception e) {
        throw new IllegalStateException("stopping kafkalite's container: " + e, e);
      }
      return;
    }
    process.destroy();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor();
      }
      Files.deleteIfExists(log);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (IOException e) {
      // the log stays in the temp folder
    }
  }
}
