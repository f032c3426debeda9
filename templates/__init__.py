"""Hardware templates: parameterized families that instantiate an Arch from a point."""
