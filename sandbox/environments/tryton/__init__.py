"""`tryton-erp`: the Tryton ERP as an environment (env.py), installed by the `tryton` extra."""
