"""Plain Python behind the analytics assets: the results table (`table`), pass rates and intervals
(`stats`), A/B comparisons (`ab`) and plots (`plots`). No Dagster definitions here."""
