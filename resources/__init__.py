"""SA3 Studio's resource files (demo recipe data, theme, icons, desktop entry).

Installed as the package `sa3_studio_resources` (pyproject maps this folder to that name) so a
wheel and a frozen bundle carry the files and importlib.resources finds them; a clone that is
not installed reads this folder in place. engines.paths.resources_dir() is the one place that
decides which.
"""
