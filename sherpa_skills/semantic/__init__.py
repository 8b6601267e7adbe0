"""Finding things by meaning and by words: the offline embedder, the chromadb companion and the tool index."""
