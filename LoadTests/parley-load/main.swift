print("parley-load: coming")
