package dev.prefixrouter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

class ClientFieldsTest {
  private static final JsonMapper JSON = JsonMapper.builder().build();

  private static String without(String body, boolean kv, boolean priority) {
    String out =
        new String(
            ClientFields.without(body.getBytes(StandardCharsets.UTF_8), kv, priority),
            StandardCharsets.UTF_8);
    JSON.readTree(out); // still one JSON value
    return out;
  }

  @Test
  void nothingAskedIsTheSameArray() {
    byte[] body = "{\"priority\":1,\"kv_transfer_params\":{}}".getBytes(StandardCharsets.UTF_8);
    assertThat(ClientFields.without(body, false, false)).isSameAs(body);
  }

  @Test
  void aBodyWithoutTheMembersIsTheSameArray() {
    byte[] body =
        "{\"m\":{\"kv_transfer_params\":1,\"priority\":2},\"x\":\"priority\"}"
            .getBytes(StandardCharsets.UTF_8);
    assertThat(ClientFields.without(body, true, true)).isSameAs(body);
  }

  @Test
  void aMemberGoesWithItsCommaWhereverItSits() {
    String kv = "\"kv_transfer_params\" : {\"remote_block_ids\":[1,2],\"x\":\"}\"}";
    assertThat(without("{" + kv + ", \"model\":\"m\"}", true, false))
        .isEqualTo("{\"model\":\"m\"}");
    assertThat(without("{\"model\":\"m\", " + kv + " ,\"n\":1}", true, false))
        .isEqualTo("{\"model\":\"m\", \"n\":1}");
    assertThat(without("{\"model\":\"m\" , " + kv + " }", true, false))
        .isEqualTo("{\"model\":\"m\" }");
    assertThat(without(" { " + kv + " } ", true, false)).isEqualTo(" {  } ");
  }

  @Test
  void everyValueTypeIsCutAtItsEnd() {
    assertThat(without("{\"a\":1,\"priority\":-12}", false, true)).isEqualTo("{\"a\":1}");
    assertThat(without("{\"priority\":7.5e1,\"a\":1}", false, true)).isEqualTo("{\"a\":1}");
    assertThat(without("{\"a\":1,\"priority\":null}", false, true)).isEqualTo("{\"a\":1}");
    assertThat(without("{\"a\":1,\"priority\":true}", false, true)).isEqualTo("{\"a\":1}");
    assertThat(without("{\"a\":1,\"priority\":\"x\\\"y\"}", false, true)).isEqualTo("{\"a\":1}");
    assertThat(without("{\"a\":1,\"kv_transfer_params\":[{}]}", true, false))
        .isEqualTo("{\"a\":1}");
  }

  @Test
  void bothMembersAdjacentOrApartAndEscapedNames() {
    assertThat(
            without("{\"a\":1,\"priority\":2,\"kv\\u005ftransfer_params\":{},\"b\":2}", true, true))
        .isEqualTo("{\"a\":1,\"b\":2}");
    assertThat(without("{\"priority\":2,\"a\":1,\"kv_transfer_params\":{}}", true, true))
        .isEqualTo("{\"a\":1}");
    assertThat(without("{\"a\":1,\"priority\":2,\"kv_transfer_params\":{}}", true, true))
        .isEqualTo("{\"a\":1}");
    assertThat(without("{\"priority\":2,\"kv_transfer_params\":{}}", true, true)).isEqualTo("{}");
    assertThat(without("{\"a\":\"é\",\"priority\":2,\"b\":\"ü\"}", false, true))
        .isEqualTo("{\"a\":\"é\",\"b\":\"ü\"}");
  }

  @Test
  void priorityStaysWhenOnlyKvTransferParamsGo() {
    assertThat(without("{\"priority\":2,\"kv_transfer_params\":{}}", true, false))
        .isEqualTo("{\"priority\":2}");
  }
}
