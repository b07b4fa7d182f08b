"""The debate engine: seats, what each seat sees, the debate's state and stop rules, and a person's seat.

A debate protocol (``debates/strategies/debate/protocols``) says who speaks and what counts; this
package runs it over the group chat of :mod:`debates.groupchat`.
"""
