"""Analytics: KPIs, drift, data quality, the warehouse tables, analyst SQL and the statistics
the gates use.
"""
