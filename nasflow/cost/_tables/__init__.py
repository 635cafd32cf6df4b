"""Where the cost model's measurements are kept: the SQL tables and the shared cache they
live in (``_store``: the schema, the cache's location and its checks), and the tables of op
latencies and of the cost model's calibration on them (``_table``)."""
