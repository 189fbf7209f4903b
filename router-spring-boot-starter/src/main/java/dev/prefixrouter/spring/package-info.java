/** prefix-router module {@code dev.prefixrouter.spring}. */
@NullMarked
package dev.prefixrouter.spring;

import org.jspecify.annotations.NullMarked;
