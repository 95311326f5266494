"""How specmon measures a server: the bench protocol and `take_snapshot`, the one bench run."""
