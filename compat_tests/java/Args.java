import java.util.HashMap;
import java.util.Map;

/** The key=value command-line arguments of the small drivers (GroupAdmin, GroupMember). */
final class Args {
    private Args() {
    }

    static Map<String, String> parse(String[] args) {
        Map<String, String> cfg = new HashMap<>();
        for (String a : args) {
            int i = a.indexOf('=');
            cfg.put(a.substring(0, i), a.substring(i + 1));
        }
        return cfg;
    }
}
