package dev.prefixrouter.api;

import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * Where one request stands in a workflow (a map-reduce fan-out, a tool chain), for {@link
 * WorkflowRouter}: the group it belongs to, its own member id within the group, and its kind.
 *
 * <ul>
 *   <li>{@link Kind#MAP}: a sibling of the group's other maps, which share a prompt prefix (the
 *       document the maps fan out over). Co-located with its siblings while their backend has room,
 *       spread to another backend when it does not.
 *   <li>{@link Kind#REDUCE}: a step that consumes the outputs of earlier members ({@link #inputs}),
 *       placed where most of its inputs' prompt tokens went. A tool chain's next step is a reduce
 *       with one input: its predecessor.
 * </ul>
 *
 * <pre>{@code
 * workflows.route(mapRequest, WorkflowStep.map("job-7", "map-3"));
 * workflows.route(reduceRequest, WorkflowStep.reduce("job-7", "reduce", List.of("map-0", "map-1")));
 * }</pre>
 *
 * Group ids are scoped by the request's tenant. Immutable.
 *
 * @param group the workflow's id, 1..{@link #MAX_ID_LENGTH} characters
 * @param member this request's id within the group, 1..{@link #MAX_ID_LENGTH} characters; a later
 *     member with the same id replaces its placement
 * @param kind map (a sibling) or reduce (consumes {@code inputs})
 * @param inputs the member ids a reduce consumes, 1..{@link #MAX_INPUTS} distinct ids, none equal
 *     to {@code member}; empty for a map
 */
public record WorkflowStep(String group, String member, Kind kind, List<String> inputs) {

  /** Longest accepted group or member id. */
  public static final int MAX_ID_LENGTH = 256;

  /** Most inputs one reduce names. */
  public static final int MAX_INPUTS = 1024;

  /** What the step is to the others of its group. */
  public enum Kind {
    /** A sibling sharing the group's prompt prefix: co-located while the holder has room. */
    MAP,
    /** Consumes earlier members' outputs: placed where most of its inputs went. */
    REDUCE
  }

  public WorkflowStep {
    checkId("group", group);
    checkId("member", member);
    Objects.requireNonNull(kind, "kind");
    inputs = List.copyOf(inputs);
    if (kind == Kind.MAP && !inputs.isEmpty()) {
      throw new IllegalArgumentException("a map step has no inputs, got " + inputs.size());
    }
    if (kind == Kind.REDUCE && (inputs.isEmpty() || inputs.size() > MAX_INPUTS)) {
      throw new IllegalArgumentException(
          "a reduce step needs 1.." + MAX_INPUTS + " inputs, got " + inputs.size());
    }
    Set<String> seen = new HashSet<>();
    for (String in : inputs) {
      checkId("input", in);
      if (in.equals(member)) {
        throw new IllegalArgumentException("a step cannot be its own input: '" + member + "'");
      }
      if (!seen.add(in)) {
        throw new IllegalArgumentException("input '" + Bounds.echo(in) + "' named twice");
      }
    }
  }

  /** A map step: a sibling of the group's other maps. */
  public static WorkflowStep map(String group, String member) {
    return new WorkflowStep(group, member, Kind.MAP, List.of());
  }

  /** A reduce step consuming {@code inputs} (for a chain: the one preceding step). */
  public static WorkflowStep reduce(String group, String member, List<String> inputs) {
    return new WorkflowStep(group, member, Kind.REDUCE, inputs);
  }

  private static void checkId(String field, String id) {
    Objects.requireNonNull(id, field);
    if (id.isEmpty() || id.length() > MAX_ID_LENGTH) {
      throw new IllegalArgumentException(
          field + " must be 1.." + MAX_ID_LENGTH + " characters, was " + id.length());
    }
  }
}
