"""The audit's stages after verification: ``changes`` (with an original at hand: a modified
file's diff or changed byte ranges, each finding's origin) and ``classify`` (a file check becomes
a drift with scope, prediction, remedy and evidence). ``api`` wires the stages together."""
