package dev.prefixrouter.scoring.archfixture;

import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;

/** Fixture: forwards its delegate's lease token out and back (passes the token rule). */
public final class FullForwardingScorer implements Scorer {
  private final Scorer delegate;

  public FullForwardingScorer(Scorer delegate) {
    this.delegate = delegate;
  }

  @Override
  public String name() {
    return delegate.name();
  }

  @Override
  public void score(ScoringContext ctx) {
    delegate.score(ctx);
  }

  @Override
  public Object onRoutedLease(ScoringContext ctx, int candidate) {
    return delegate.onRoutedLease(ctx, candidate);
  }

  @Override
  public void onEnded(int slot, Object token) {
    delegate.onEnded(slot, token);
  }
}
