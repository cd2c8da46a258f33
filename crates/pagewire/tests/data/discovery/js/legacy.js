// Never fetched by a browser that runs modules.
