if __name__ != "kafkalite.protocol":  # the repository's protocol/ folder is the package's kafkalite/protocol
    raise ImportError(f"{__name__} is kafkalite.protocol: import it by that name (one name, one copy of its modules)")
