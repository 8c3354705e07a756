import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.security.Permission;
import java.util.ArrayList;
import java.lang.reflect.Field;
import java.util.Base64;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.common.utils.internals.Exit;

/**
 * Runs Kafka's command-line tools, one after another, in one JVM: each request is a tool's main
 * class, its arguments and its standard input; each answer is the exit status the tool asked for
 * and what it wrote to stdout and stderr. The tool runs through its real {@code main(String[])}.
 *
 * <p>A JVM start costs a second or more of CPU; the tools are small Admin, producer and consumer
 * programs, so many runs in one JVM keep the suite cheap. What a real JVM exit would end is
 * caught instead: Kafka's {@code Exit.exit} (most tools) through its exit procedure, and
 * {@code System.exit} (VerifiableProducer, VerifiableConsumer...) through a security manager. The
 * first exit status asked for is the tool's status, as it would have been the process's.
 * System.out and System.err are replaced once, by streams that write to the current run's buffers,
 * so a stream a tool kept in a static field still reaches the right run.
 *
 * <p>Protocol, one line each way, fields separated by tabs, byte strings in base64:
 * request {@code id, timeout_ms, main class, stdin, arg...}; answer
 * {@code id, status, stdout, stderr} where status is the exit status, or "timeout" (then the
 * harness halts: a tool that did not finish may hold threads and streams; the caller starts a new
 * JVM). When the tool's main returns or it asks to exit, the shutdown hooks it added during the
 * run are taken off the JVM and run, as the JVM would at its exit (VerifiableProducer, for one,
 * closes its producer and prints its results in a hook); that needs
 * {@code --add-opens java.base/java.lang=ALL-UNNAMED} to read the JVM's list of hooks.
 */
public final class ToolHarness {

    /**
     * An OutputStream whose target is the current run's buffer (or nothing between runs). What the
     * thread that asked to exit writes afterwards (while the trap unwinds its stack through the
     * tool's catch blocks) is dropped: in a real JVM that thread never ran again.
     */
    static final class Switch extends OutputStream {
        volatile OutputStream target = OutputStream.nullOutputStream();

        private boolean dropped() {
            return Thread.currentThread() == exitedThread;
        }

        @Override public void write(int b) throws java.io.IOException {
            if (!dropped()) {
                target.write(b);
            }
        }

        @Override public void write(byte[] b, int off, int len) throws java.io.IOException {
            if (!dropped()) {
                target.write(b, off, len);
            }
        }

        @Override public void flush() throws java.io.IOException { target.flush(); }
    }

    /** Thrown where the tool asked the JVM to exit; an Error so that tools' catch (Exception) let it pass. */
    static final class ExitTrap extends Error {
        final int status;

        ExitTrap(int status) {
            super("exit " + status, null, false, false);
            this.status = status;
        }
    }

    static volatile boolean inRun = false;
    static volatile Integer exitStatus = null;
    static volatile Thread exitedThread = null;
    /** The hooks tools added through Kafka's Exit.addShutdownHook during the current run. */
    static final List<Thread> exitHooks = new ArrayList<>();

    static synchronized void trapExit(int status) {
        if (exitStatus == null) {
            exitStatus = status;
            exitedThread = Thread.currentThread();
        }
        throw new ExitTrap(status);
    }

    @SuppressWarnings("removal")
    public static void main(String[] args) throws Exception {
        PrintStream protocol = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        Switch out = new Switch();
        Switch err = new Switch();
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        Exit.setExitProcedure((status, message) -> trapExit(status));
        Exit.setHaltProcedure((status, message) -> trapExit(status));
        Exit.setShutdownHookAdder((name, hook) -> {
            synchronized (exitHooks) {
                exitHooks.add(new Thread(hook, name));
            }
        });
        System.setSecurityManager(new SecurityManager() {
            @Override public void checkPermission(Permission perm) { }
            @Override public void checkPermission(Permission perm, Object context) { }
            @Override public void checkExit(int status) {
                if (inRun) {
                    trapExit(status);
                }
            }
        });
        BufferedReader requests = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Base64.Decoder b64 = Base64.getDecoder();
        Base64.Encoder enc = Base64.getEncoder();
        String line;
        while ((line = requests.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            String[] fields = line.split("\t", -1);
            String id = fields[0];
            long timeoutMs = Long.parseLong(fields[1]);
            String mainClass = fields[2];
            byte[] stdin = b64.decode(fields[3]);
            List<String> toolArgs = new ArrayList<>();
            for (int i = 4; i < fields.length; i++) {
                toolArgs.add(new String(b64.decode(fields[i]), StandardCharsets.UTF_8));
            }
            ByteArrayOutputStream stdout = new ByteArrayOutputStream();
            ByteArrayOutputStream stderr = new ByteArrayOutputStream();
            String status = run(mainClass, toolArgs.toArray(new String[0]), stdin, timeoutMs, out, err, stdout, stderr);
            synchronized (stdout) {
                synchronized (stderr) {
                    protocol.println(id + "\t" + status + "\t" + enc.encodeToString(stdout.toByteArray()) + "\t"
                            + enc.encodeToString(stderr.toByteArray()));
                }
            }
            if (status.equals("timeout")) {
                protocol.flush();
                Runtime.getRuntime().halt(3);
            }
        }
        Runtime.getRuntime().halt(0);
    }

    static String run(String mainClass, String[] args, byte[] stdin, long timeoutMs, Switch out, Switch err,
                      ByteArrayOutputStream stdout, ByteArrayOutputStream stderr) throws InterruptedException {
        System.setIn(new ByteArrayInputStream(stdin));
        OutputStream syncOut = synced(stdout);
        OutputStream syncErr = synced(stderr);
        out.target = syncOut;
        err.target = syncErr;
        exitStatus = null;
        exitedThread = null;
        synchronized (exitHooks) {
            exitHooks.clear();
        }
        Set<Thread> hooksBefore = runtimeHooks();
        long deadline = System.currentTimeMillis() + timeoutMs;
        inRun = true;
        Throwable[] failure = new Throwable[1];
        Thread tool = new Thread(() -> {
            try {
                Method main = Class.forName(mainClass).getMethod("main", String[].class);
                main.invoke(null, (Object) args);
            } catch (InvocationTargetException e) {
                if (!(e.getCause() instanceof ExitTrap)) {
                    failure[0] = e.getCause();
                }
            } catch (ExitTrap e) {
                // the status is in exitStatus
            } catch (Throwable t) {
                failure[0] = t;
            }
        }, "tool-main");
        tool.start();
        tool.join(timeoutMs);
        try {
            if (tool.isAlive()) {
                return "timeout";
            }
            if (!runHooks(hooksBefore, deadline)) {
                return "timeout";
            }
            if (exitStatus != null) {
                return Integer.toString(exitStatus);
            }
            if (failure[0] != null) {
                // an exception out of main: the JVM would print it and exit with status 1
                StringWriter trace = new StringWriter();
                failure[0].printStackTrace(new PrintWriter(trace));
                byte[] text = ("Exception in thread \"main\" " + trace).getBytes(StandardCharsets.UTF_8);
                synchronized (stderr) {
                    stderr.write(text, 0, text.length);
                }
                return "1";
            }
            return "0";
        } finally {
            System.out.flush();
            System.err.flush();
            inRun = false;
            // output that tools' leftover threads write after their main returned goes nowhere
            out.target = OutputStream.nullOutputStream();
            err.target = OutputStream.nullOutputStream();
        }
    }

    /** The JVM's registered shutdown hooks (java.lang.ApplicationShutdownHooks.hooks). */
    @SuppressWarnings("unchecked")
    static Set<Thread> runtimeHooks() {
        try {
            Field field = Class.forName("java.lang.ApplicationShutdownHooks").getDeclaredField("hooks");
            field.setAccessible(true);
            Map<Thread, Thread> hooks = (Map<Thread, Thread>) field.get(null);
            synchronized (Class.forName("java.lang.ApplicationShutdownHooks")) {
                Set<Thread> copy = Collections.newSetFromMap(new IdentityHashMap<>());
                copy.addAll(hooks.keySet());
                return copy;
            }
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot read the JVM's shutdown hooks (--add-opens java.base/java.lang=ALL-UNNAMED)", e);
        }
    }

    /** Runs the hooks added since `before` (removed from the JVM), all at once as at a JVM exit;
     * false if they did not end by the deadline. */
    static boolean runHooks(Set<Thread> before, long deadline) throws InterruptedException {
        List<Thread> hooks = new ArrayList<>();
        for (Thread hook : runtimeHooks()) {
            if (!before.contains(hook)) {
                Runtime.getRuntime().removeShutdownHook(hook);
                hooks.add(hook);
            }
        }
        synchronized (exitHooks) {
            hooks.addAll(exitHooks);
            exitHooks.clear();
        }
        for (Thread hook : hooks) {
            hook.start();
        }
        for (Thread hook : hooks) {
            hook.join(Math.max(1, deadline - System.currentTimeMillis()));
            if (hook.isAlive()) {
                return false;
            }
        }
        return true;
    }

    /** Writes into `buffer` under its lock (a tool's threads may write at once). */
    static OutputStream synced(ByteArrayOutputStream buffer) {
        return new OutputStream() {
            @Override public void write(int b) {
                synchronized (buffer) {
                    buffer.write(b);
                }
            }

            @Override public void write(byte[] b, int off, int len) {
                synchronized (buffer) {
                    buffer.write(b, off, len);
                }
            }
        };
    }

    private ToolHarness() { }
}
