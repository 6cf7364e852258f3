not TVMScript (
