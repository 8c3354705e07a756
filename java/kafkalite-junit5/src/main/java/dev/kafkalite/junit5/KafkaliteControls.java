package dev.kafkalite.junit5;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Collection;
import java.util.Map;

/** The controls endpoint of a broker (java.net.http; no JSON library): a method per control from
 * {@link GeneratedControls}, and {@link #call} for any control by name. Results are JSON text. */
public final class KafkaliteControls extends GeneratedControls {
  private final String url;
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

  private final String token;

  /** The controls at {@code url}, with the shared secret of $KAFKALITE_CONTROLS_TOKEN (which a
   * broker started with it in its environment demands, as --controls-token). */
  public KafkaliteControls(String url) {
    this(url, System.getenv("KAFKALITE_CONTROLS_TOKEN"));
  }

  /** The controls at {@code url}; {@code token} (null or empty: none) is sent as a bearer token. */
  public KafkaliteControls(String url, String token) {
    this.url = url.endsWith("/") ? url : url + "/";
    this.token = token == null || token.isEmpty() ? null : token;
  }

  /** The controls' base URL, ending in "/". */
  public String url() { return url; }

  /** A control the broker refused (HTTP 400) or failed (500); the message is its answer. */
  public static final class ControlException extends RuntimeException {
    public final int status;

    ControlException(String name, int status, String body) {
      super("control " + name + " (HTTP " + status + "): " + body);
      this.status = status;
    }
  }

  @Override
  public String call(String name, Map<String, ?> arguments) {
    String body = send(HttpRequest.newBuilder(URI.create(url + "controls/" + name))
        .header("content-type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json(arguments))), name);
    // {"result": ...}: the result is the text between the first colon and the closing brace
    return body.substring(body.indexOf(':') + 1, body.lastIndexOf('}')).trim();
  }

  /** The control table, GET /controls, as JSON text. */
  public String list() {
    return send(HttpRequest.newBuilder(URI.create(url + "controls")).GET(), "list");
  }

  private String send(HttpRequest.Builder request, String name) {
    if (token != null) request.header("authorization", "Bearer " + token);
    try {
      HttpResponse<String> response = http.send(request.timeout(Duration.ofSeconds(60)).build(),
          HttpResponse.BodyHandlers.ofString());
      if (response.statusCode() != 200) throw new ControlException(name, response.statusCode(), response.body());
      return response.body();
    } catch (IOException e) {
      throw new ControlException(name, 0, e.toString());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ControlException(name, 0, "interrupted");
    }
  }

  /** JSON text of null, booleans, numbers, strings, maps and collections: what control arguments are. */
  static String json(Object value) {
    if (value == null) return "null";
    if (value instanceof Boolean || value instanceof Number) return value.toString();
    if (value instanceof Map<?, ?> map) {
      StringBuilder out = new StringBuilder("{");
      for (Map.Entry<?, ?> e : map.entrySet()) {
        if (out.length() > 1) out.append(',');
        out.append(json(String.valueOf(e.getKey()))).append(':').append(json(e.getValue()));
      }
      return out.append('}').toString();
    }
    if (value instanceof Collection<?> items) {
      StringBuilder out = new StringBuilder("[");
      for (Object item : items) {
        if (out.length() > 1) out.append(',');
        out.append(json(item));
      }
      return out.append(']').toString();
    }
    StringBuilder out = new StringBuilder("\"");
    for (char c : value.toString().toCharArray()) {
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
          else out.append(c);
        }
      }
    }
    return out.append('"').toString();
  }
}
