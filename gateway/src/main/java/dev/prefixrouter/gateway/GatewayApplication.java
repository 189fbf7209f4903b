package dev.prefixrouter.gateway;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/** The runnable gateway: {@code java -jar gateway/target/gateway.jar}. */
@SpringBootApplication
public class GatewayApplication {

  /** Starts the gateway. */
  public static void main(String[] args) {
    SpringApplication.run(GatewayApplication.class, args);
  }
}
