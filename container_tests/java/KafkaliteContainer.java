import com.github.dockerjava.api.command.InspectContainerResponse;
import com.github.dockerjava.api.model.ExposedPort;
import com.github.dockerjava.api.model.PortBinding;
import com.github.dockerjava.api.model.Ports;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Base64;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.images.builder.Transferable;
import org.testcontainers.utility.DockerImageName;

/**
 * kafkalite's image in testcontainers-java's GenericContainer, as kafkalite.testcontainers does it
 * in Python: an EXTERNAL listener on container port 9092 (published on the host's loopback at a
 * free port) advertised as host:mapped port, and an INTERNAL one on 19092 advertised as the
 * network alias given to withInternalAlias. The mapped port is known only once the container
 * runs, so the entry point waits for a file (KAFKALITE_WAIT_FOR_ENV_FILE) that
 * containerIsStarting writes with KAFKALITE_ADVERTISED_LISTENERS (and the Docker host's name for
 * the HTTP endpoints' Host check); the container is ready at the broker's ready line.
 * withControls() serves the test controls on 8083 with a random token (docs/reachable.md), sent
 * as "Authorization: Bearer " + getControlsToken().
 */
public class KafkaliteContainer extends GenericContainer<KafkaliteContainer> {
    static final int PORT = 9092;
    static final int INTERNAL_PORT = 19092;
    static final int CONTROLS_PORT = 8083;
    static final String ENV_FILE = "/tmp/kafkalite-testcontainers.env";

    private String internalAlias;
    private String controlsToken;

    public KafkaliteContainer(String image) {
        super(DockerImageName.parse(image));
        withExposedPorts(PORT);
        withEnv("KAFKALITE_LISTENERS", "EXTERNAL://0.0.0.0:" + PORT + ",INTERNAL://0.0.0.0:" + INTERNAL_PORT);
        withEnv("KAFKALITE_WAIT_FOR_ENV_FILE", ENV_FILE);
        // loopback only: GenericContainer publishes exposed ports on every interface
        withCreateContainerCmdModifier(cmd -> cmd.getHostConfig()
                .withPublishAllPorts(false)
                .withPortBindings(getExposedPorts().stream()
                        .map(port -> new PortBinding(Ports.Binding.bindIp("127.0.0.1"), ExposedPort.tcp(port)))
                        .toArray(PortBinding[]::new)));
        waitingFor(Wait.forLogMessage(".*kafkalite ready bootstrap=.*", 1));
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

    /** The test controls on container port 8083, guarded by a random token: they listen on the container's every address. */
    public KafkaliteContainer withControls() {
        byte[] secret = new byte[24];
        new SecureRandom().nextBytes(secret);
        controlsToken = Base64.getUrlEncoder().withoutPadding().encodeToString(secret);
        addExposedPort(CONTROLS_PORT);
        withEnv("KAFKALITE_CONTROLS", "0.0.0.0:" + CONTROLS_PORT);
        return withEnv("KAFKALITE_CONTROLS_TOKEN", controlsToken);
    }

    /** "http://host:port/" of the controls (withControls()). */
    public String getControlsUrl() {
        return "http://" + getHost() + ":" + getMappedPort(CONTROLS_PORT) + "/";
    }

    /** The token the controls ask for, as "Authorization: Bearer TOKEN"; null without withControls(). */
    public String getControlsToken() {
        return controlsToken;
    }

    public String getBootstrapServers() {
        return getHost() + ":" + getMappedPort(PORT);
    }

    public String getInternalBootstrapServers() {
        return internalAlias + ":" + INTERNAL_PORT;
    }

    @Override
    protected void containerIsStarting(InspectContainerResponse containerInfo) {
        String listeners = "EXTERNAL://" + getBootstrapServers()
                + (internalAlias != null ? ",INTERNAL://" + getInternalBootstrapServers() : "");
        byte[] content = ("KAFKALITE_ADVERTISED_LISTENERS=" + listeners + "\n"
                + "KAFKALITE_HTTP_ALLOWED_HOSTS=" + getHost() + "\n").getBytes(StandardCharsets.UTF_8);
        copyFileToContainer(Transferable.of(content, 0644), ENV_FILE);
    }
}
