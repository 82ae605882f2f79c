// Keeps an object library valid when a lab has no sources of that kind (transitional labs).
