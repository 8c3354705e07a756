package dev.kafkalite.junit5;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ExtensionContext.Namespace;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;

/** The extension behind {@link Kafkalite}: one broker per class (or per test with perTest),
 * kept in the class's (or the test's) store, which closes it when that context ends. */
public final class KafkaliteExtension implements BeforeAllCallback, BeforeEachCallback, ParameterResolver {
  private static final Namespace NAMESPACE = Namespace.create(KafkaliteExtension.class);
  private static final Duration START_TIMEOUT = Duration.ofSeconds(60);

  /** Closes the broker when its context's store is closed. */
  private record Running(KafkaliteBroker broker) implements ExtensionContext.Store.CloseableResource, AutoCloseable {
    @Override
    public void close() { broker.close(); }
  }

  private static Kafkalite settings(ExtensionContext context) {
    Kafkalite annotation = context.getRequiredTestClass().getAnnotation(Kafkalite.class);
    if (annotation == null) {
      throw new IllegalStateException("KafkaliteExtension needs @Kafkalite on " + context.getRequiredTestClass());
    }
    return annotation;
  }

  private static List<String> options(Kafkalite settings) {
    List<String> options = new ArrayList<>();
    for (String setting : settings.settings()) options.addAll(List.of("-c", setting));
    if (settings.nodes() > 1) options.addAll(List.of("--nodes", Integer.toString(settings.nodes())));
    if (!settings.seed().isEmpty()) options.addAll(List.of("--seed", settings.seed()));
    options.addAll(Arrays.asList(settings.args()));
    return options;
  }

  private static KafkaliteBroker start(ExtensionContext context) {
    try {
      KafkaliteBroker broker = KafkaliteBroker.start(options(settings(context)), START_TIMEOUT);
      context.getStore(NAMESPACE).put(KafkaliteBroker.class, new Running(broker));
      return broker;
    } catch (IOException e) {
      throw new IllegalStateException(e.getMessage(), e);
    }
  }

  /** The broker of this context: the test's own with perTest, else the class's. */
  private static KafkaliteBroker broker(ExtensionContext context) {
    for (ExtensionContext c = context; c != null; c = c.getParent().orElse(null)) {
      Running running = c.getStore(NAMESPACE).get(KafkaliteBroker.class, Running.class);
      if (running != null) return running.broker();
    }
    throw new IllegalStateException("no kafkalite broker in " + context.getDisplayName());
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    if (!settings(context).perTest()) start(context);
  }

  @Override
  public void beforeEach(ExtensionContext context) {
    Kafkalite settings = settings(context);
    if (settings.perTest()) start(context);
    else if (settings.reset()) broker(context).reset();
  }

  @Override
  public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
    return parameter.getParameter().getType() == KafkaliteBroker.class;
  }

  @Override
  public Object resolveParameter(ParameterContext parameter, ExtensionContext context)
      throws ParameterResolutionException {
    return broker(context);
  }
}
