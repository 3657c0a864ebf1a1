"""The window itself: its layout of panels and menus, the composition of services and
controllers (Studio), opening it (launch), the last-resort error hook, and what it remembers
between runs."""
