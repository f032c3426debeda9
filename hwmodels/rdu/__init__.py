"""The RDU hardware model: ``cost`` (op, plan, energy and area costs mappers query), ``model`` (evaluate)."""
