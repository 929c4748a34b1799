"""The reviewer page's forms: one :class:`~.base.GatePage` per interrupt kind (or adapter shape).

Each kind names its page in its declaration (:class:`wop_langgraph.kinds.InterruptKind`);
:func:`wop_langgraph.kinds.page_for` picks a payload's page, and :mod:`wop_langgraph.server.html`
renders whatever page it gets.
"""
