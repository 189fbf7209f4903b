package dev.prefixrouter.scoring.archfixture;

import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;

/** Fixture: forwards its delegate's lease token out but never back (violates the token rule). */
public final class HalfForwardingScorer implements Scorer {
  private final Scorer delegate;

  public HalfForwardingScorer(Scorer delegate) {
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
  public void onEnded(int slot) {
    delegate.onEnded(slot);
  }
}
