"""Gold: what the silver tables mean. Lag and Burrow's rules, their roll-ups (in Spark, file
by file, or kept up to date incrementally), rebalances and assignment balance, share lag.

Imports only ``silver`` and ``read``.
"""
