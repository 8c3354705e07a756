if __name__ != "kafkalite.broker":  # the repository's broker/ folder is the package's kafkalite/broker
    raise ImportError(f"{__name__} is kafkalite.broker: import it by that name (one name, one copy of its modules)")
