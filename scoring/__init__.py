"""MedImageOSWorld."""
