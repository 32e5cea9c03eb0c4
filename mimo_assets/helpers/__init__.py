"""Plain Python the Dagster definitions use (event building, inputs, the results table, statistics,
plots, the instance's home). Nothing in this package is a Dagster definition."""
