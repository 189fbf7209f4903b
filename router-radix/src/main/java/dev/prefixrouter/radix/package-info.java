/** prefix-router module {@code dev.prefixrouter.radix}. */
@NullMarked
package dev.prefixrouter.radix;

import org.jspecify.annotations.NullMarked;
