"""Built-in model zoo: every model is a function returning a dse.graph.Graph."""
