/**
 * Deliberate violations and clean controls for {@code WallsCanFailTest}, one package per walled
 * module; test sources only, never scanned by {@code WallsTest}.
 */
package dev.prefixrouter.api.archfixture;
