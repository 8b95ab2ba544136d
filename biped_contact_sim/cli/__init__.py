"""Command line: `biped-sim` (run, compare, bench, list), the in-process runner and the plots."""
