package dev.prefixrouter.api.spi;

enum NoListener implements RoutingListener {
  INSTANCE
}
