package instrument

// Version is the version of the instrument package.
const Version = "0.1.0"
