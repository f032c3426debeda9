"""The systolic-array family's hardware side: the cost modules the mappers query (``compute``,
``memory``, ``user_mode``, ``scalesim_calc``, ``cost``, ``batch``, ``pricing``) and the model that
turns a mapping into Metrics (``model``)."""
