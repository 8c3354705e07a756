import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * One Java program that drives kafka-clients for the compatibility suite.
 *
 * Protocol: stdin carries one JSON object, the request: {"cmd": NAME, "bootstrap": "host:port",
 * "config": {client properties}, ...command arguments}. stdout carries JSON lines: the command's
 * results, each on its own line. A failure that ends the command is printed as
 * {"error": {"type": exception class, "message": ..., "code": Kafka error name, "causes": [...]}}
 * and exits with status 1.
 *
 * With the argument "serve" the program stays up and reads one request per stdin line, each with
 * an "id"; requests run concurrently, every output line carries its request's "id", and a request
 * ends with {"id", "end": true, "status": 0|1}. It exits when stdin closes.
 *
 * Each command family lives in its own class with a static run(Map request) method; register
 * new ones in COMMANDS.
 */
public final class KafkaDriver {
    interface Command {
        void run(Map<String, Object> request) throws Exception;
    }

    static final Map<String, Command> COMMANDS = new LinkedHashMap<>();

    static {
        COMMANDS.put("produce", ProduceCommand::run);
        COMMANDS.put("consume", ConsumeCommand::run);
        COMMANDS.put("admin", AdminCommand::run);
        COMMANDS.put("warmup", Warmup::run);
        COMMANDS.put("throttle", QuotaCommands::run);
    }

    private static final PrintStream OUT =
            new PrintStream(new BufferedOutputStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), 1 << 16),
                    false, StandardCharsets.UTF_8);

    /** The id of the request the current thread serves (serve mode). */
    private static final ThreadLocal<Object> REQUEST_ID = new ThreadLocal<>();

    /** Prints one JSON line on stdout (tagged with the request id in serve mode). */
    @SuppressWarnings("unchecked")
    static synchronized void emit(Object value) {
        Object id = REQUEST_ID.get();
        if (id != null && value instanceof Map) {
            Map<String, Object> tagged = new LinkedHashMap<>();
            tagged.put("id", id);
            tagged.putAll((Map<String, Object>) value);
            value = tagged;
        }
        OUT.println(Json.write(value));
        OUT.flush();
    }

    /** Client properties: bootstrap.servers, then the request's "config" object as strings. */
    static Properties props(Map<String, Object> request) {
        Properties p = new Properties();
        p.put("bootstrap.servers", request.get("bootstrap"));
        Object cfg = request.get("config");
        if (cfg != null) {
            for (Map.Entry<String, Object> e : Json.obj(cfg).entrySet()) {
                p.put(e.getKey(), String.valueOf(e.getValue()));
            }
        }
        return p;
    }

    /** The exception a caller cares about: unwraps ExecutionException and friends. */
    static Throwable root(Throwable t) {
        while ((t instanceof ExecutionException || t instanceof CompletionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    static Map<String, Object> describe(Throwable t) {
        t = root(t);
        java.util.List<Object> causes = new java.util.ArrayList<>();
        for (Throwable c = t.getCause(); c != null && causes.size() < 5; c = c.getCause()) {
            causes.add(Json.map("type", c.getClass().getName(), "message", c.getMessage()));
        }
        // Kafka's error code name (TOPIC_ALREADY_EXISTS, ...) for exceptions that map to one
        String code = org.apache.kafka.common.protocol.Errors.forException(t).name();
        return Json.map("type", t.getClass().getName(), "message", t.getMessage(), "code", code, "causes", causes);
    }

    static long longArg(Map<String, Object> m, String key, long dflt) {
        Object v = m.get(key);
        return v == null ? dflt : ((Number) v).longValue();
    }

    static void dispatch(Map<String, Object> request) throws Exception {
        String name = (String) request.get("cmd");
        Command cmd = COMMANDS.get(name);
        if (cmd == null) throw new IllegalArgumentException("unknown command " + name + "; known: " + COMMANDS.keySet());
        cmd.run(request);
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && "serve".equals(args[0])) {
            serve();
            return;
        }
        int status = 0;
        try {
            dispatch(Json.obj(Json.parse(readAll(System.in))));
        } catch (Throwable t) {
            emit(Json.map("error", describe(t)));
            status = 1;
        }
        OUT.flush();
        // Client threads (metadata, heartbeats) must not keep the JVM alive.
        Runtime.getRuntime().halt(status);
    }

    private static void serve() throws Exception {
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "request");
            t.setDaemon(true);
            return t;
        });
        java.io.BufferedReader in = new java.io.BufferedReader(
                new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            final String text = line;
            pool.execute(() -> {
                int status = 0;
                try {
                    Map<String, Object> request = Json.obj(Json.parse(text));
                    REQUEST_ID.set(request.get("id"));
                    dispatch(request);
                } catch (Throwable t) {
                    emit(Json.map("error", describe(t)));
                    status = 1;
                } finally {
                    emit(Json.map("end", true, "status", status));
                    REQUEST_ID.remove();
                }
            });
        }
        OUT.flush();
        Runtime.getRuntime().halt(0);
    }

    private static String readAll(InputStream in) throws java.io.IOException {
        ByteArrayOutputStream buf = new ByteArrayOutputStream(1 << 16);
        in.transferTo(buf);
        return buf.toString(StandardCharsets.UTF_8);
    }
}
