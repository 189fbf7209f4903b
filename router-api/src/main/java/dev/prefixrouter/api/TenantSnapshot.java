package dev.prefixrouter.api;

import java.util.Objects;

/**
 * One tenant's limiter state.
 *
 * @param tenant the tenant
 * @param availableTokens tokens in the bucket now (negative while in debt after a true-up)
 * @param capacityTokens the bucket's burst capacity
 * @param rejected requests rejected so far (since the tenant was last loaded)
 */
public record TenantSnapshot(
    String tenant, long availableTokens, long capacityTokens, long rejected) {
  public TenantSnapshot {
    Objects.requireNonNull(tenant, "tenant");
  }
}
