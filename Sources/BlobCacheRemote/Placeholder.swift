enum RemotePlaceholder {}
