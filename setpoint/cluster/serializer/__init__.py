"""Request bodies decoded as the apiserver's serializers decode them."""
