"""The simulator's controllers: one module per scaling policy, metric series or recorder.

Every controller is a :class:`base.Controller`; engine.simulate builds the
ones a design has, in the order their hooks run within a step:
``request_count`` and ``demand`` (the series the policies read, closed each
minute before anyone decides); ``fast_path`` (and its what-if
``asg_fast_path``) and ``fast_scale_in`` (the 10-second step policies);
``schedule``, ``target_tracking`` (the service layer), ``wake`` and ``sleep``
(the service's desired count, once a minute); ``managed_scaling`` (the
instance layer, once a minute, last); ``warm_pool``, ``zero`` and ``spot``
(what the run bills and records). ``base`` holds the hooks, the run's context
and the rules several share.
"""
