"""stub"""
class StreamEncoder:
    pass
