"""The subcommands of ``seq2bert``, one module per recipe family; each module's ``register(sub)`` adds its
subcommands (arguments and the function they run). Written out here, in the order ``--help`` lists them."""

from seq2bert.commands import encoders, lm, predict, serve, small, tools, translation, vectors

COMMANDS = (translation, lm, vectors, encoders, predict, small, serve, tools)
