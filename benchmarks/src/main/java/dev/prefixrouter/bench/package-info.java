/** Simulator, workloads, policy comparison and JMH benchmarks. Not published. */
package dev.prefixrouter.bench;
