package dev.kafkalite.junit5;

import com.github.dockerjava.api.command.InspectContainerResponse;
import com.github.dockerjava.api.model.ExposedPort;
import com.github.dockerjava.api.model.PortBinding;
import com.github.dockerjava.api.model.Ports;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.images.builder.Transferable;
import org.testcontainers.utility.DockerImageName;
import org.testcontainers.utility.MountableFile;

/**
 * kafkalite's image as a testcontainers-java container, with the controls of {@link KafkaliteBroker}:
 * {@link #controls()}, {@link #reset()}, {@link #snapshot}, {@link #restore}, {@link #advanceClock}
 * and the waits ({@code controls().waitRecords(...)}, {@code waitCommitted}, {@code waitGroup}, ...).
 *
 * <p>An EXTERNAL listener on container port 9092 (published on the host's loopback at a free port)
 * is advertised as host:mapped port, and an INTERNAL one on 19092 as the network alias given to
 * {@link #withInternalAlias}. The mapped port is known only once the container runs, so the image's
 * entry point waits for a file (KAFKALITE_WAIT_FOR_ENV_FILE) that {@link #containerIsStarting}
 * writes with KAFKALITE_ADVERTISED_LISTENERS (and the Docker host's name for the HTTP endpoints'
 * Host check); the container is ready at the broker's ready line. The controls listen on 8083 of
 * the container's every address, so they demand a random token, which {@link #controls()} sends.
 *
 * <p>testcontainers is not a dependency of this module: a test that uses this class brings
 * org.testcontainers:testcontainers itself (the version of docs/java.md or newer).
 */
public class KafkaliteContainer extends GenericContainer<KafkaliteContainer> {
  /** The image of {@link #fromEnvironment}: the kafkalite.image property, else KAFKALITE_IMAGE. */
  public static final String IMAGE_PROPERTY = "kafkalite.image";
  public static final String IMAGE_ENV = "KAFKALITE_IMAGE";
  /** The tag docs/ci-usage.md builds the image as (docker build -t kafkalite .). */
  public static final String DEFAULT_IMAGE = "kafkalite:latest";
  static final int PORT = 9092;
  static final int INTERNAL_PORT = 19092;
  static final int CONTROLS_PORT = 8083;
  static final String ENV_FILE = "/tmp/kafkalite-testcontainers.env";
  static final String SEED_FILE = "/tmp/kafkalite-seed.json";

  private final String controlsToken;
  private String internalAlias;
  private KafkaliteControls controls;

  public KafkaliteContainer(String image) {
    super(DockerImageName.parse(image));
    byte[] secret = new byte[24];
    new SecureRandom().nextBytes(secret);
    controlsToken = Base64.getUrlEncoder().withoutPadding().encodeToString(secret);
    withExposedPorts(PORT, CONTROLS_PORT);
    withEnv("KAFKALITE_LISTENERS", "EXTERNAL://0.0.0.0:" + PORT + ",INTERNAL://0.0.0.0:" + INTERNAL_PORT);
    withEnv("KAFKALITE_WAIT_FOR_ENV_FILE", ENV_FILE);
    withEnv("KAFKALITE_CONTROLS", "0.0.0.0:" + CONTROLS_PORT);
    withEnv("KAFKALITE_CONTROLS_TOKEN", controlsToken);
    // loopback only: GenericContainer publishes exposed ports on every interface
    withCreateContainerCmdModifier(cmd -> cmd.getHostConfig()
        .withPublishAllPorts(false)
        .withPortBindings(getExposedPorts().stream()
            .map(port -> new PortBinding(Ports.Binding.bindIp("127.0.0.1"), ExposedPort.tcp(port)))
            .toArray(PortBinding[]::new)));
    waitingFor(Wait.forLogMessage(".*kafkalite ready bootstrap=.*", 1));
  }

  /** A container of the image named by the kafkalite.image property or KAFKALITE_IMAGE, else
   * {@value #DEFAULT_IMAGE}. */
  public static KafkaliteContainer fromEnvironment() {
    String image = System.getProperty(IMAGE_PROPERTY, "");
    if (image.isBlank()) image = System.getenv().getOrDefault(IMAGE_ENV, "");
    return new KafkaliteContainer(image.isBlank() ? DEFAULT_IMAGE : image.trim());
  }

  /** A broker setting by its Kafka name: withConfig("num.partitions", "3"). */
  public KafkaliteContainer withConfig(String key, String value) {
    return withEnv("KAFKALITE_" + key.replaceAll("[.\\-]", "_").toUpperCase(), value);
  }

  /** The name other containers on the network reach the broker by. */
  public KafkaliteContainer withInternalAlias(String alias) {
    internalAlias = alias;
    return withNetworkAliases(alias);
  }

  /** A seed file of the host (topics, records, offsets, ACLs, users), copied into the container and
   * loaded before the ready line. Records files it names by a relative path are not copied. */
  public KafkaliteContainer withSeed(Path seed) {
    withCopyFileToContainer(MountableFile.forHostPath(seed), SEED_FILE);
    return withEnv("KAFKALITE_SEED", SEED_FILE);
  }

  public String getBootstrapServers() {
    return getHost() + ":" + getMappedPort(PORT);
  }

  public String getInternalBootstrapServers() {
    return internalAlias + ":" + INTERNAL_PORT;
  }

  /** "http://host:port/" of the controls, published on the host's loopback. */
  public String getControlsUrl() {
    return "http://" + getHost() + ":" + getMappedPort(CONTROLS_PORT) + "/";
  }

  /** The token the controls ask for, as "Authorization: Bearer TOKEN". */
  public String getControlsToken() {
    return controlsToken;
  }

  /** The broker's test controls (with the token): a method per control. */
  public synchronized KafkaliteControls controls() {
    if (controls == null) controls = new KafkaliteControls(getControlsUrl(), controlsToken);
    return controls;
  }

  /** Back to empty; connected clients stay connected. */
  public void reset() { controls().reset(); }

  public void snapshot(String name) { controls().snapshot(name); }

  public void restore(String name) { controls().restore(name); }

  public void advanceClock(Duration by) { controls().advanceClock(by.toMillis()); }

  @Override
  protected void containerIsStarting(InspectContainerResponse containerInfo) {
    String listeners = "EXTERNAL://" + getBootstrapServers()
        + (internalAlias != null ? ",INTERNAL://" + getInternalBootstrapServers() : "");
    byte[] content = ("KAFKALITE_ADVERTISED_LISTENERS=" + listeners + "\n"
        + "KAFKALITE_HTTP_ALLOWED_HOSTS=" + getHost() + "\n").getBytes(StandardCharsets.UTF_8);
    copyFileToContainer(Transferable.of(content, 0644), ENV_FILE);
  }

  /** The extension's broker in a container, when no kafkalite command is found: the options of
   * {@link Kafkalite} (settings, a seed file, other options of the command) as the command's flags,
   * which the image's entry point passes to the broker. One node only: the container publishes one
   * Kafka port. */
  static KafkaliteBroker startBroker(List<String> options, Duration timeout) {
    KafkaliteContainer container = fromEnvironment().withStartupTimeout(timeout);
    List<String> flags = new ArrayList<>();
    for (int i = 0; i < options.size(); i++) {
      String option = options.get(i);
      if (option.equals("--nodes")) {
        throw new IllegalStateException("kafkalite's container runs one node: @Kafkalite(nodes = "
            + options.get(i + 1) + ") needs the kafkalite command (-Dkafkalite.cmd, KAFKALITE_CMD or PATH)");
      } else if (option.equals("--seed") && i + 1 < options.size()) {
        Path seed = Path.of(options.get(++i));
        if (!Files.isRegularFile(seed)) throw new IllegalStateException("no seed file " + seed);
        container.withSeed(seed);
      } else {
        flags.add(option);
      }
    }
    if (!flags.isEmpty()) container.withCommand(flags.toArray(String[]::new));
    try {
      container.start();
    } catch (RuntimeException e) {
      container.stop();  // what was created of it goes with the failure
      throw e;
    }
    return new KafkaliteBroker(container, container.getBootstrapServers(), container.controls());
  }
}
