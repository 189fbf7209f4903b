/** prefix-router module {@code dev.prefixrouter.scoring}. */
@NullMarked
package dev.prefixrouter.scoring;

import org.jspecify.annotations.NullMarked;
