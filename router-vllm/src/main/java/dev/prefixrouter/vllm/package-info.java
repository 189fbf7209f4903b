/**
 * Adapters for OpenAI-compatible inference engines (vLLM, SGLang): the OpenAI request reader, the
 * KV-event subscriber and the Prometheus metrics poller.
 *
 * <p>Framework-neutral: nothing here starts a thread or opens a socket on class load, and every
 * type documents its thread safety.
 */
@NullMarked
package dev.prefixrouter.vllm;

import org.jspecify.annotations.NullMarked;
