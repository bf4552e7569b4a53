"""Where libsortd was installed: meson install writes the path here (from _config.py.in); a
copy installed by pip has None and looks for the library on the system's paths."""
LIBSORTD = None
