"""Pure OpenWOP wire models and rules: no I/O, no clock that was not handed in."""
