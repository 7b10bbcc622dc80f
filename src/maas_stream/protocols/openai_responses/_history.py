"""stub"""
def to_canonical(b): pass
def from_canonical(m, *, lossy=None): pass
def validate(b): pass
