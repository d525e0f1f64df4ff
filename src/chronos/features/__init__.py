"""What the policy observes of a kernel: the seed's 25 PTX features (`seed`) and observation v2 (`v2`: the
seed's plus loop trip counts, memory classes and occupancy, 52 in all)."""
