"""Report: the gold tables told to people. Each group's health and findings, rows in words,
``report.html`` (page, data, inlined assets) and the PNG plots.

Imports only the layers below it: ``gold``, ``silver``, ``read``.
"""
