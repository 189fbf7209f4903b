package dev.prefixrouter.api.archfixture.internal;

/** A type of an internal package (not API). */
public final class Hidden {}
